import tensorflow as tf

def g(ys, x):
    ys.append(tf.sin(x))
    return tf.gradients(ys.copy(), x)

def f(x):
    return g([x * x], x)
