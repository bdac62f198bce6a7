import tensorflow as tf

HELD = []

class Rep:
    def _rm(self, other):
        return HELD
    __rmul__ = _rm

def g(x, n):
    logp = [0.0] * n
    y = tf.sin(x)
    logp[1] += y
    return tf.gradients(logp, x)

def f(x):
    HELD.append(x * x)
    HELD.append(0.0)
    return g(x, Rep())
