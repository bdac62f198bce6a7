"""Second derivatives with nested tapes."""
import tensorflow as tf

x = tf.constant([0.5, 1.5, -2.0])
with tf.GradientTape() as outer:
    outer.watch(x)
    with tf.GradientTape() as inner:
        inner.watch(x)
        y = tf.reduce_sum(x ** 3 + tf.sin(x))
    g = inner.gradient(y, x)
h = outer.gradient(g, x)

with tf.Session() as sess:
    gv, hv = sess.run([g, h])
print("GRAD g", gv.tolist())
print("GRAD h", hv.tolist())
