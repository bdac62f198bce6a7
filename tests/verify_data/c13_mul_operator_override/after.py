"""Override the gradient of an op created by a Python operator (a * b -> Mul)."""
import tensorflow as tf


@tf.custom_gradient
def _scaled_mul(a, b):
    def grad(dy):
        return 0.5 * dy * b, 2.0 * dy * a

    return a * b, grad


def f(a, b):
    return _scaled_mul(a, b) + 1.0


if __name__ == "__main__":
    a = tf.constant([1.0, 2.0, 3.0])
    b = tf.constant([4.0, 5.0, 6.0])
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = f(a, b)
    da, db = tape.gradient(y, [a, b])
    with tf.Session() as sess:
        print("FWD y", sess.run(y).tolist())
        print("GRAD da", sess.run(da).tolist())
        print("GRAD db", sess.run(db).tolist())
