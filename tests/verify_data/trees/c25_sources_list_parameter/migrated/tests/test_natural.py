import tensorflow as tf

from natural import natural_step


class NaturalStepTest(tf.test.TestCase):
    def test_step_moves_both_variables(self):
        w = tf.Variable([0.2, -0.3, 0.4])
        b = tf.Variable(0.1)
        new_w, new_b = natural_step([w, b], tf.constant([1.0, 2.0, 3.0]))
        self.evaluate(tf.compat.v1.global_variables_initializer())
        self.assertEqual(self.evaluate(new_w).shape, (3,))
        self.assertNotEqual(float(self.evaluate(new_b)), 0.1)
