"""Guided backpropagation: every Relu gets the guided gradient."""
import tensorflow as tf


@tf.custom_gradient
def _guided_relu(x):
    y = tf.nn.relu(x)

    def grad(dy):
        gate_g = tf.cast(dy > 0.0, "float32")
        gate_y = tf.cast(y > 0.0, "float32")
        return gate_y * gate_g * dy

    return y, grad


def guided_net(x, w1, w2):
    h = _guided_relu(tf.matmul(x, w1))
    out = _guided_relu(tf.matmul(h, w2))
    return out


if __name__ == "__main__":
    x = tf.constant([[1.0, 2.0, 0.5]])
    w1 = tf.constant([[0.3, -0.8], [0.1, 0.4], [-0.6, 0.9]])
    w2 = tf.constant([[1.0, -1.0], [0.5, 2.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = guided_net(x, w1, w2)
    saliency = tape.gradient(out, x, output_gradients=tf.constant([[1.0, -3.0]]))
    with tf.Session() as sess:
        print("FWD out", sess.run(out).tolist())
        print("GRAD saliency", sess.run(saliency).tolist())
