"""c02 migrated to plain TF2, with the gradient taken inside a tf.function."""
import tensorflow as tf


@tf.custom_gradient
def _sign_quantize(x):
    def grad(dy):
        return tf.where((x >= -1) & (x <= 1), dy, tf.zeros_like(dy))

    return tf.sign(x), grad


def binary(input):
    return _sign_quantize(input)


@tf.function
def step(v, w):
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = binary(v) * w
        target = tf.reduce_sum(y)
    return y, tape.gradient(target, [v])[0]


if __name__ == "__main__":
    v = tf.constant([-2.0, -0.5, 0.3, 0.9, 1.7])
    w = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0])
    yv, gv = step(v, w)
    print("FWD y", yv.numpy().tolist())
    print("GRAD dv", gv.numpy().tolist())
