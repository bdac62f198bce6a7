"""Grad-CAM: the layer outputs come in a dict that the caller's network built."""
import tensorflow as tf


def build_net(x):
    layers = {}
    w1 = tf.constant([[0.5, -0.2, 0.1], [0.3, 0.8, -0.6]])
    layers["conv"] = tf.nn.relu(tf.matmul(x, w1))
    w2 = tf.constant([[1.0, -1.0], [0.5, 0.25], [-0.75, 2.0]])
    layers["fc"] = tf.matmul(layers["conv"], w2)
    return layers


def grad_cam(layers, class_index):
    conv = layers["conv"]
    one_hot = tf.one_hot([class_index], 2)
    signal = tf.reduce_sum(layers["fc"] * one_hot)
    grads = tf.gradients(signal, conv)[0]
    weights = tf.reduce_mean(grads, axis=0)
    return tf.nn.relu(tf.reduce_sum(conv * weights, axis=1))
