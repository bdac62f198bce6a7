"""Identity op whose gradient is overridden by a registered CustomGrad (x5)."""
import tensorflow as tf


@tf.custom_gradient
def _identity_times_five(x):
    def grad(dy):
        return 5.0 * dy

    return tf.identity(x, name="Identity"), grad


inp = tf.constant([1.0, -2.0, 3.0])
with tf.GradientTape() as tape:
    tape.watch(inp)
    output = _identity_times_five(inp)
    loss = tf.reduce_sum(output * output)
d_inp = [tape.gradient(loss, inp)]

with tf.Session() as sess:
    out_v, d_v = sess.run([output, d_inp])
print("FWD output", out_v.tolist())
print("GRAD d_inp", d_v[0].tolist())
