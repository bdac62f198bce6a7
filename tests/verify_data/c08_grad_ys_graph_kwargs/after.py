"""tf.gradients with grad_ys and the graph-only keyword arguments."""
import tensorflow as tf

a = tf.constant([1.0, 2.0, 3.0])
b = tf.constant([0.5, -1.0, 2.0])
with tf.GradientTape() as tape:
    tape.watch([a, b])
    y = a * b + tf.sin(a)
gy = tf.constant([1.0, 10.0, 100.0])
grads = tape.gradient(y, [a, b], output_gradients=gy)

with tf.Session() as sess:
    ga, gb = sess.run(grads)
print("GRAD da", ga.tolist())
print("GRAD db", gb.tolist())
