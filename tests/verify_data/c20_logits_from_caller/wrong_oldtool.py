# The tool's own output for this case before issue 10 (wrong: see docs/verification.md).
"""Fast gradient sign attack: `logits` is a parameter computed by the caller from `x`.

The path x -> logits lies outside `fgsm`, so a tape opened inside `fgsm`
cannot see it.
"""
import tensorflow as tf


def fgsm(x, logits, labels, eps=0.1):
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    grad = tape.gradient(loss, x)
    return tf.stop_gradient(x + eps * tf.sign(grad))


def model(x):
    w = tf.constant([[0.2, -0.4, 0.1], [0.7, 0.3, -0.5]])
    return tf.matmul(tf.tanh(x), w)


if __name__ == "__main__":
    x = tf.constant([[0.3, -0.5], [0.9, 0.2]])
    labels = tf.constant([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    adv = fgsm(x, model(x), labels)
    with tf.Session() as sess:
        print("FWD adv", sess.run(adv).tolist())
