"""c27 as the tool migrates it: the tape opens before the interpolate, which is watched where it is made."""
import tensorflow as tf


def critic(h):
    h = tf.square(h)
    w = tf.constant([[0.5], [-1.5], [2.0]])
    return tf.matmul(h, w)


def gradient_penalty(real, fake, alpha):
    with tf.GradientTape() as tape:
        interp = real + alpha * (fake - real)
        tape.watch(interp)
        with tf.name_scope("critic"):
            score = critic(interp)
    grad = tape.gradient(score, interp)
    slopes = tf.sqrt(tf.reduce_sum(tf.square(grad), axis=1))
    return tf.reduce_mean((slopes - 1.0) ** 2)


if __name__ == "__main__":
    real = tf.constant([[1.0, 0.0, 2.0], [0.5, 0.5, -1.0]])
    fake = tf.constant([[0.0, 1.0, -1.0], [2.0, -0.5, 0.5]])
    gp = gradient_penalty(real, fake, tf.constant([[0.3], [0.8]]))
    with tf.Session() as sess:
        print("FWD gp", float(sess.run(gp)))
