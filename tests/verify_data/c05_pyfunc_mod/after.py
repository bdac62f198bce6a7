"""Elementwise modulo written in numpy, made differentiable with tf.custom_gradient."""
import numpy as np
import tensorflow as tf


def np_mod(x, y):
    return (x % y).astype(np.float32)


@tf.custom_gradient
def _mod(x, y):
    z = tf.numpy_function(np_mod, [x, y], tf.float32)
    z.set_shape(x.shape)

    def grad(dy):
        return dy * 1, dy * tf.negative(tf.math.floordiv(x, y))

    return z, grad


def tf_mod(x, y, name=None):
    with tf.name_scope(name or "mod"):
        return _mod(x, y)


if __name__ == "__main__":
    x = tf.constant([0.3, 0.7, 1.2, 1.7])
    y = tf.constant([0.2, 0.5, 1.0, 2.9])
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        z = tf_mod(x, y)
    gr = tape.gradient(z, [x, y])
    with tf.Session() as sess:
        zv, gx, gy = sess.run([z, gr[0], gr[1]])
    print("FWD z", zv.tolist())
    print("GRAD dx", gx.tolist())
    print("GRAD dy", gy.tolist())
