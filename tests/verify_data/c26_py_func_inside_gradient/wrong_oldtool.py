"""c26 as the tool migrated it before issue 10: the gradient function keeps `tf.py_func(...)[0]`, which in TF2 eager picks the first element of the one tensor it returns (wrong).

The gradient function indexes `[0]` on py_func's list result: in graph mode
that picks the one output tensor.
"""
import numpy as np
import tensorflow as tf


def np_softsign(x):
    return (x / (1.0 + np.abs(x))).astype(np.float32)


def np_softsign_prime(x):
    return (1.0 / np.square(1.0 + np.abs(x))).astype(np.float32)


def _softsign_grad(x, grad):
    d = tf.py_func(np_softsign_prime, [x], [tf.float32], stateful=False)[0]
    return grad * tf.reshape(d, tf.shape(x))


@tf.custom_gradient
def numpy_function_with_softsign_numpy_grad(x):
    y = [tf.numpy_function(np_softsign, [x], tf.float32, stateful=False)]
    return y, lambda grad: _softsign_grad(x, grad)


def softsign(x):
    y = numpy_function_with_softsign_numpy_grad(x)[0]
    return tf.reshape(y, tf.shape(x))


if __name__ == "__main__":
    x = tf.constant([-2.0, -0.5, 0.0, 0.7, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = softsign(x) * tf.constant([1.0, 2.0, 3.0, 4.0, 5.0])
        y_sum = tf.reduce_sum(y)
    dx = tape.gradient(y_sum, x)
    with tf.Session() as sess:
        print("FWD y", sess.run(y).tolist())
        print("GRAD dx", sess.run(dx).tolist())
