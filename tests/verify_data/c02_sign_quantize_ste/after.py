"""Binarization: forward sign(x), backward hard-tanh straight-through estimator."""
import tensorflow as tf


@tf.custom_gradient
def _sign_quantize(x):
    def grad(dy):
        cond = (x >= -1) & (x <= 1)  # inside the linear region of hard-tanh
        return tf.where(cond, dy, tf.zeros_like(dy))

    return tf.sign(x), grad


def binary(input):
    x = input
    x = _sign_quantize(x)
    return x


if __name__ == "__main__":
    v = tf.constant([-2.0, -0.5, 0.3, 0.9, 1.7])
    w = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0])
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = binary(v) * w
        target = tf.reduce_sum(y)
    g = tape.gradient(target, [v])[0]
    with tf.Session() as sess:
        yv, gv = sess.run([y, g])
    print("FWD y", yv.tolist())
    print("GRAD dv", gv.tolist())
