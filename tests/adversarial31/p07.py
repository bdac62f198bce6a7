import tensorflow as tf

KEEP = []

def stash(l):
    KEEP.append(l)

def add(t):
    KEEP[-1].append(t)

def f(x):
    z = x * x
    ys = []
    ys.append(tf.sin(x))
    stash(ys)
    add(z)
    return tf.gradients(ys, x)
