"""The sources are a list handed in as one parameter (`variables`)."""
import tensorflow as tf


def natural_step(variables, x, lr=0.1):
    with tf.GradientTape() as tape:
        tape.watch(variables)
        pred = tf.reduce_sum(x * variables[0]) + variables[1]
        loss = tf.square(pred - 1.0)
    grads = tape.gradient(loss, variables)
    return [v - lr * g for v, g in zip(variables, grads)]


if __name__ == "__main__":
    w = tf.Variable([0.2, -0.3, 0.4])
    b = tf.Variable(0.1)
    x = tf.constant([1.0, 2.0, 3.0])
    new_w, new_b = natural_step([w, b], x)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        print("FWD new_w", sess.run(new_w).tolist())
        print("FWD new_b", float(sess.run(new_b)))
