"""Forward f, backward g via the stop_gradient identity t + stop_gradient(f - t)."""
import tensorflow as tf

x1 = tf.Variable(1.0)
x2 = tf.Variable(3.0)
x3 = tf.Variable(6.0)
with tf.GradientTape(persistent=True) as tape:
    f = x1 + x2 * x3
    t = -f
    y1 = t + tf.stop_gradient(f - t)
    y2 = f
grad_1 = [tape.gradient(y1, x1)]
grad_2 = [tape.gradient(y2, x1)]

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print("FWD y1", float(sess.run(y1)))
    print("GRAD g1", [float(v) for v in sess.run(grad_1)])
    print("GRAD g2", [float(v) for v in sess.run(grad_2)])
