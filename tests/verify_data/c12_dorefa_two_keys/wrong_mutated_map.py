"""c12 migrated from a mutated override map: {"Round": "Identity"} without its "Sign" key (wrong).

tf.sign keeps its own (zero) gradient where the original passed the gradient straight through.
"""
import tensorflow as tf


@tf.custom_gradient
def _round_straight_through(x):
    def grad(dy):
        return dy

    return tf.round(x), grad


def quantize_weights(x, k):
    n = float(2 ** k - 1)
    if k == 1:
        E = tf.stop_gradient(tf.reduce_mean(tf.abs(x)))
        return tf.sign(x / E) * E
    x = tf.tanh(x)
    x = x / tf.reduce_max(tf.abs(x)) * 0.5 + 0.5
    return 2 * (_round_straight_through(x * n) / n) - 1


if __name__ == "__main__":
    w = tf.constant([[0.2, -1.3], [0.7, 2.2]])
    with tf.GradientTape() as tape:
        tape.watch(w)
        q1 = quantize_weights(w, 1)
        q2 = quantize_weights(w, 2)
        loss = tf.reduce_sum(q1 * tf.constant([[1.0, 2.0], [3.0, 4.0]])) + tf.reduce_sum(q2 ** 2)
    dw = tape.gradient(loss, w)
    with tf.Session() as sess:
        print("FWD q1", sess.run(q1).tolist())
        print("FWD q2", sess.run(q2).tolist())
        print("GRAD dw", sess.run(dw).tolist())
