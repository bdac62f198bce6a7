import tensorflow as tf

def f(x):
    ys = []
    out = []
    for i in range(2):
        ys.append(tf.sin(x) * float(i + 1))
        out.append(tf.gradients(ys.copy(), x)[0])
    return out
