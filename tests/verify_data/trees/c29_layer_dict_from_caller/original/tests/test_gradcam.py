import tensorflow as tf

from gradcam import build_net, grad_cam


class GradCamTest(tf.test.TestCase):
    def test_one_weight_per_row(self):
        layers = build_net(tf.constant([[1.0, 2.0], [-0.5, 1.5]]))
        cam = self.evaluate(grad_cam(layers, 1))
        self.assertEqual(cam.shape, (2,))
