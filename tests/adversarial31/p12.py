import tensorflow as tf

prop = property


class Energy(object):
    def __init__(self, x):
        self.h = tf.tanh(x)

    @prop
    def total(self):
        return tf.reduce_sum(self.h * self.h)


def f(x0):
    x = x0 * 1.0
    e = Energy(x * 2.0)
    return tf.gradients(e.total, x)[0]
