"""Code already passed through an automatic 1.x -> 2.x renamer: compat.v1 spellings."""
import tensorflow as tf


@tf.custom_gradient
def _clip_grad_identity(x):
    def grad(dy):
        return tf.clip_by_value(dy, -0.1, 0.1)

    return tf.identity(x), grad


def clipped_identity(x):
    return _clip_grad_identity(x)


if __name__ == "__main__":
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(clipped_identity(x) ** 2)
    dx = [tape.gradient(y, x, unconnected_gradients="zero")]
    with tf.compat.v1.Session() as sess:
        print("FWD y", float(sess.run(y)))
        print("GRAD dx", sess.run(dx)[0].tolist())
