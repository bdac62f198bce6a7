"""A MatMul gradient override around `a @ b`.

`@` creates a MatMul op only for rank-2 operands; for rank 3 it creates
BatchMatMulV2, which the override map does not name, so batched products
keep the default gradient.
"""
import tensorflow as tf


@tf.RegisterGradient("HalfMatMulGrad")
def _half_matmul_grad(op, grad):
    a, b = op.inputs
    return 0.5 * tf.matmul(grad, b, transpose_b=True), 0.5 * tf.matmul(a, grad, transpose_a=True)


def project(a, b):
    with tf.get_default_graph().gradient_override_map({"MatMul": "HalfMatMulGrad"}):
        return a @ b


if __name__ == "__main__":
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    b = tf.constant([[0.5, -1.0], [2.0, 0.25]])
    y = project(a, b)
    da, db = tf.gradients(tf.reduce_sum(y), [a, b])
    with tf.Session() as sess:
        print("FWD y", sess.run(y).tolist())
        print("GRAD da", sess.run(da).tolist())
        print("GRAD db", sess.run(db).tolist())
