"""c13 migrated to plain TF2: eager execution, no Session."""
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
    print("FWD y", y.numpy().tolist())
    print("GRAD da", da.numpy().tolist())
    print("GRAD db", db.numpy().tolist())
