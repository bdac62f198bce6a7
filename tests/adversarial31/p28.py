import tensorflow as tf

def f(x):
    logp = {}
    out = []
    for i in range(2):
        logp[i] = tf.sin(x) * float(i + 1)
        out.append(tf.gradients(sum(logp.values()), x)[0])
    return out
