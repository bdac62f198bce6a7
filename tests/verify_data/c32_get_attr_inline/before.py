"""A registered gradient that reads the forward op's attribute (LeakyRelu's alpha) inline."""
import tensorflow as tf


@tf.RegisterGradient("LeakyTimesAlphaGrad")
def _leaky_times_alpha_grad(op, grad):
    x = op.inputs[0]
    return tf.where(x > 0.0, grad, op.get_attr("alpha") * grad)


def leaky(x):
    with tf.get_default_graph().gradient_override_map({"LeakyRelu": "LeakyTimesAlphaGrad"}):
        return tf.nn.leaky_relu(x, alpha=0.25)


if __name__ == "__main__":
    x = tf.constant([-2.0, -0.5, 0.75, 3.0])
    y = leaky(x)
    dx = tf.gradients(tf.reduce_sum(y * y), x)[0]
    with tf.Session() as sess:
        print("FWD y", sess.run(y).tolist())
        print("GRAD dx", sess.run(dx).tolist())
