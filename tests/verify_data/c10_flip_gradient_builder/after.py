"""Domain-adversarial gradient reversal layer."""
import tensorflow as tf


class FlipGradientBuilder(object):
    def __init__(self):
        self.num_calls = 0

    def __call__(self, x, l=1.0):
        @tf.custom_gradient
        def _flip(x):
            def grad(dy):
                return tf.negative(dy) * l

            return tf.identity(x), grad

        y = _flip(x)
        self.num_calls += 1
        return y


flip_gradient = FlipGradientBuilder()

if __name__ == "__main__":
    feat = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    w = tf.constant([[0.5], [-0.25]])
    with tf.GradientTape() as tape:
        tape.watch(feat)
        domain_logits = tf.matmul(flip_gradient(feat, l=0.3), w)
        label_logits = tf.matmul(flip_gradient(feat * 2.0, l=2.0), w)
        loss = tf.reduce_sum(domain_logits ** 2) + tf.reduce_sum(label_logits)
    d_feat = tape.gradient(loss, feat)
    with tf.Session() as sess:
        print("FWD loss", float(sess.run(loss)))
        print("GRAD d_feat", sess.run(d_feat).tolist())
