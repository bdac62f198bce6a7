"""A loss assembled by side effects (list appends) between the forward pass and tf.gradients."""
import tensorflow as tf


def total_loss_grad(x, w):
    terms = [tf.reduce_sum(x * w)]
    terms.append(tf.reduce_sum(tf.square(x)))
    loss = tf.add_n(terms)
    return tf.gradients(loss, x)[0]


if __name__ == "__main__":
    x = tf.constant([[0.5, -1.0], [2.0, 0.25]])
    w = tf.constant([[1.0, 2.0], [-3.0, 0.5]])
    g = total_loss_grad(x, w)
    with tf.Session() as sess:
        print("GRAD g", sess.run(g).tolist())
