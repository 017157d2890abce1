"""A few steps of MultiWorkerMirroredStrategy on CPU, from TF_CONFIG; prints one JSON line `worker {...}`.

No Keras: a custom loop whose gradients are all-reduced across the workers (TF's collective
ops over gRPC). Each worker trains on its own batch, so equal weights everywhere mean the
all-reduce happened. The line holds the TF_CONFIG the pod got, the cluster and task TF's
resolver read from it, the number of replicas in sync, the losses and the weights.
"""

import json
import os

import numpy as np
import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy()  # reads TF_CONFIG through TFConfigClusterResolver
resolver = strategy.cluster_resolver
task_index = int(resolver.task_id)
batch = np.random.default_rng(task_index).normal(size=(64, 8)).astype("float32")
target = batch @ np.arange(8, dtype="float32")
with strategy.scope():
    weights = tf.Variable(tf.zeros([8]))


@tf.function
def step(x, y):
    def replica_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.linalg.matvec(x, weights) - y) ** 2)
        context = tf.distribute.get_replica_context()
        grad = context.all_reduce(tf.distribute.ReduceOp.MEAN, tape.gradient(loss, weights))
        weights.assign_sub(0.1 * grad)
        return context.all_reduce(tf.distribute.ReduceOp.MEAN, loss)

    return strategy.run(replica_step, args=(x, y))


losses = [float(step(tf.constant(batch), tf.constant(target))) for _ in range(5)]
report = {
    "TF_CONFIG": json.loads(os.environ["TF_CONFIG"]),
    "cluster": resolver.cluster_spec().as_dict(),
    "task": [resolver.task_type, task_index],
    "replicas": strategy.num_replicas_in_sync,
    "losses": losses,
    "weights": [round(float(v), 5) for v in weights.numpy()],
}
print("worker " + json.dumps(report), flush=True)
