"""Fast gradient sign attack: `logits` is a parameter computed by the caller from `x`.

The path x -> logits lies outside `fgsm`, so a tape opened inside `fgsm`
cannot see it.
"""
import tensorflow as tf


def fgsm(x, logits, labels, eps=0.1):
    loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    grad = tf.gradients(loss, x)[0]
    return tf.stop_gradient(x + eps * tf.sign(grad))


def model(x):
    w = tf.constant([[0.2, -0.4, 0.1], [0.7, 0.3, -0.5]])
    return tf.matmul(tf.tanh(x), w)
