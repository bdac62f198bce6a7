import tensorflow as tf

KEEP = []

def addp(t):
    KEEP[0].append(t)

def f(x):
    params = [x * 1.0]
    KEEP.append(params)
    a = tf.sin(x)
    y = tf.reduce_sum(a * params[0])
    addp(a)
    return tf.gradients(y, params)
