"""c26 migrated by hand: numpy_function in the forward pass and in the gradient, one tensor each."""
import numpy as np
import tensorflow as tf


def np_softsign(x):
    return (x / (1.0 + np.abs(x))).astype(np.float32)


def np_softsign_prime(x):
    return (1.0 / np.square(1.0 + np.abs(x))).astype(np.float32)


def _softsign_grad(x, grad):
    d = tf.numpy_function(np_softsign_prime, [x], tf.float32, stateful=False)
    return grad * tf.reshape(d, tf.shape(x))


@tf.custom_gradient
def _softsign_numpy(x):
    y = tf.numpy_function(np_softsign, [x], tf.float32, stateful=False)
    return y, lambda grad: _softsign_grad(x, grad)


def softsign(x):
    y = _softsign_numpy(x)
    return tf.reshape(y, tf.shape(x))


if __name__ == "__main__":
    x = tf.constant([-2.0, -0.5, 0.0, 0.7, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = softsign(x) * tf.constant([1.0, 2.0, 3.0, 4.0, 5.0])
        y_sum = tf.reduce_sum(y)
    dx = tape.gradient(y_sum, x)
    print("FWD y", y.numpy().tolist())
    print("GRAD dx", dx.numpy().tolist())
