"""An override map whose op type is never created inside the block."""
import tensorflow as tf


def scaled_mean(some_vals, some_other_val):
    return tf.reduce_mean(some_vals) * some_other_val


if __name__ == "__main__":
    a = tf.constant([1.0, 2.0, 4.0])
    b = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        m = scaled_mean(a, b)
    da, db = tape.gradient(m, [a, b])
    with tf.Session() as sess:
        mv, dav, dbv = sess.run([m, da, db])
    print("FWD m", float(mv))
    print("GRAD da", dav.tolist())
    print("GRAD db", float(dbv))
