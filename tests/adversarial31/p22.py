import tensorflow as tf

def f(x):
    d = {}
    out = []
    for i in range(2):
        y = tf.sin(x) * float(i + 1)
        d[i] = y
        out.append(tf.gradients(list(d.values()), x)[0])
    return out
