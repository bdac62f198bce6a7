import tensorflow as tf

KEEP = []

def add(t):
    KEEP[0].append(t)

def f(x):
    z = x * x
    ys = []
    KEEP.append(ys)
    ys.append(tf.sin(x))
    add(z)
    return tf.gradients(ys, x)
