"""The side effects stay inside the tape's region, in order."""
import tensorflow as tf


def total_loss_grad(x, w):
    with tf.GradientTape() as tape:
        tape.watch(x)
        terms = [tf.reduce_sum(x * w)]
        terms.append(tf.reduce_sum(tf.square(x)))
        loss = tf.add_n(terms)
    return tape.gradient(loss, x)


if __name__ == "__main__":
    x = tf.constant([[0.5, -1.0], [2.0, 0.25]])
    w = tf.constant([[1.0, 2.0], [-3.0, 0.5]])
    g = total_loss_grad(x, w)
    print("GRAD g", g.numpy().tolist())
