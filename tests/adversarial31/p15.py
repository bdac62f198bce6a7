import tensorflow as tf


class Energy(object):
    def __init__(self, x):
        self.h = tf.tanh(x)

    def _lookup(self, name):
        if name == "total":
            return tf.reduce_sum(self.h * self.h)
        raise AttributeError(name)
    __getattr__ = _lookup


def f(x0):
    x = x0 * 1.0
    e = Energy(x * 2.0)
    return tf.gradients(e.total, x)[0]
