"""Jacobians with GradientTape."""
import tensorflow as tf

x = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
w = tf.constant([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]])
with tf.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y = tf.tanh(tf.matmul(x, w))
j = tape.jacobian(y, x)
bj = tape.batch_jacobian(y, x)

with tf.Session() as sess:
    jv, bjv = sess.run([j, bj])
print("GRAD jacobian", jv.tolist())
print("GRAD batch_jacobian", bjv.tolist())
