import tensorflow as tf

from fgsm_lib import fgsm, model


class FgsmTest(tf.test.TestCase):
    def test_adversarial_step(self):
        x = tf.constant([[0.3, -0.5], [0.9, 0.2]])
        labels = tf.constant([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
        adv = self.evaluate(fgsm(x, model(x), labels))
        self.assertEqual(adv.shape, (2, 2))
