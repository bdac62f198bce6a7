"""The sources are a list handed in as one parameter (`variables`)."""
import tensorflow as tf


def natural_step(variables, x, lr=0.1):
    pred = tf.reduce_sum(x * variables[0]) + variables[1]
    loss = tf.square(pred - 1.0)
    grads = tf.gradients(loss, variables)
    return [v - lr * g for v, g in zip(variables, grads)]
