"""The MatMul override migrated where it applied: rank-2 products only (BatchMatMulV2 was never overridden)."""
import tensorflow as tf


@tf.custom_gradient
def _half_matmul(a, b):
    def grad(dy):
        return 0.5 * tf.matmul(dy, b, transpose_b=True), 0.5 * tf.matmul(a, dy, transpose_a=True)

    return tf.matmul(a, b), grad


def project(a, b):
    if a.shape.rank == 2 and b.shape.rank == 2:
        return _half_matmul(a, b)
    return a @ b


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
