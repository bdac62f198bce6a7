"""Gradient reversal through an Identity override, on variables."""
import tensorflow as tf

x1 = tf.Variable(1.0)
x2 = tf.Variable(3.0)
x3 = tf.Variable(6.0)


@tf.custom_gradient
def _reverse_gradient(x):
    def grad(dy):
        return -dy

    return tf.identity(x), grad


with tf.GradientTape(persistent=True) as tape:
    oo = x1 + x2 * x3
    output = _reverse_gradient(oo)
grad_1 = [tape.gradient(output, oo)]
grad_2 = tape.gradient(output, [x1, x2, x3])

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print("GRAD d_oo", [float(v) for v in sess.run(grad_1)])
    print("GRAD d_x", [float(v) for v in sess.run(grad_2)])
