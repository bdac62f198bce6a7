"""A rank-3 `@` under a MatMul override, migrated as if `@` were always MatMul (wrong for batches).

The script multiplies rank-2 matrices only, so its own gradients agree; a
rank-3 product gets half the gradient the original computed.
"""
import tensorflow as tf


@tf.custom_gradient
def _half_matmul(a, b):
    def grad(dy):
        return 0.5 * tf.matmul(dy, b, transpose_b=True), 0.5 * tf.matmul(a, dy, transpose_a=True)

    return tf.matmul(a, b), grad


def project(a, b):
    return _half_matmul(a, b)


if __name__ == "__main__":
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    b = tf.constant([[0.5, -1.0], [2.0, 0.25]])
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = project(a, b)
        total = tf.reduce_sum(y)
    da, db = tape.gradient(total, [a, b])
    print("FWD y", y.numpy().tolist())
    print("GRAD da", da.numpy().tolist())
    print("GRAD db", db.numpy().tolist())
