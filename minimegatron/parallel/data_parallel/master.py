"""Data parallelism, master style (PyTorch's ``DataParallel``), on MPI ranks.

Idea: every rank holds the whole model; the mini-batch is split over the N
ranks. One rank, the ROOT, plays PyTorch's master GPU: it owns the batch, the
loss, the optimizer and its state, and it talks to every other rank itself.

One training step (``DataParallel.step``), shapes for a GPT with B sequences::

    1. broadcast   weights W (P values)            root -> all
    2. scatter     inputs (B, T) -> (B/N, T)         root -> all
    3. forward     y_r = model(x_r)                  every rank, (B/N, T, V)
    4. gather      y = cat(y_0 .. y_{N-1})           all -> root, (B, T, V)
    5. loss        L = loss_fn(y, targets); dL/dy    root only
    6. scatter     dL/dy -> dL/dy_r                  root -> all, (B/N, T, V)
    7. backward    y_r.backward(dL/dy_r)             every rank: dL/dW partial
    8. reduce      dL/dW = sum_r dL/dW_r             all -> root
    9. update      optimizer.step()                  root only

Since L is the loss of the whole batch, the partial gradients simply add:
dL/dW = sum_r (dL/dy_r)(dy_r/dW). Nothing is averaged.

Communication per step (trace's flat model for rooted ops, b bytes per value,
G = P*b the weight bytes, O = the bytes of the full output y)::

    root:   sends (N-1)G (broadcast) + (N-1)/N*(X + O) (scatters), receives
            (N-1)/N*O (gather) + (N-1)G (reduce)
    other:  receives G + (X + O)/N, sends O/N + G

so the root moves about N-1 times the bytes of any other rank, and it alone
holds the full output, its gradient and the optimizer state. That imbalance is
the lesson; ``DistributedDataParallel`` (parallel/data_parallel/ddp.py) removes it.

    minimegatron run -n 8 tutorials/05_data_parallel.py
"""
from minimegatron import comm
from minimegatron.comm import trace
from minimegatron.backend import xp
from minimegatron.parallel.split import check_divisible, flatten, unflatten
from minimegatron.autodiff.tensor import Tensor


class DataParallel:
    """Master-style data parallelism: ``loss = DataParallel(model, group).step(...)``.

    ``step(inputs, targets, loss_fn, optimizer)``: the root passes the whole
    batch, the targets and the optimizer of ``module.parameters()``; the other
    ranks may pass None for all three. Returns the loss (a float) on the root,
    None elsewhere. The model's output must have the batch on axis 0.
    """

    def __init__(self, module, group, root=0):
        if not 0 <= root < group.size:
            raise ValueError(f"root {root} is not a rank of group {group.name!r} "
                             f"(size {group.size})")
        self.module, self.group, self.root = module, group, root
        self.params = [p for p in module.parameters() if p.requires_grad]
        self.shapes = [p.shape for p in self.params]
        self.is_root = group.rank == root

    def broadcast_weights(self):
        """Step 1: the root's weights to every rank, in one flat buffer of P values."""
        flat = flatten([p.data for p in self.params], self.params[0].dtype)
        with trace.label("dp.weights"):
            comm.broadcast(flat, self.group, self.root)
        for p, value in zip(self.params, unflatten(flat, self.shapes)):
            p.data[...] = value

    def step(self, inputs, targets, loss_fn, optimizer):
        group, root = self.group, self.root
        shape = comm.bcast_object(tuple(inputs.shape) if self.is_root else None, group, root)
        check_divisible(shape[0], group, "DataParallel batch")   # every rank, same error
        self.broadcast_weights()                                         # 1
        with trace.label("dp.inputs"):
            x_shard = comm.scatter(inputs if self.is_root else None, group, root)  # 2 (B/N, T)
        self.module.zero_grad()
        with trace.span("forward"):
            y_shard = self.module(x_shard)                               # 3 (B/N, T, V)
        with trace.label("dp.outputs"):
            y_full = comm.gather(y_shard.data, group, root)              # 4 (B, T, V) on root
        loss, grad_y = None, None
        if self.is_root:
            with trace.span("loss"):                                     # 5
                y = Tensor(y_full, requires_grad=True)
                loss = loss_fn(y, targets)
                loss.backward()
                grad_y = y.grad                                          # (B, T, V)
        with trace.label("dp.output_grads"):
            grad_shard = comm.scatter(grad_y, group, root)               # 6 (B/N, T, V)
        with trace.span("backward"):
            y_shard.backward(grad_shard)                                 # 7
        grads = [p.grad if p.grad is not None else xp.zeros(p.shape, p.dtype)
                 for p in self.params]
        with trace.label("dp.grads"):
            total = comm.reduce(flatten(grads, self.params[0].dtype), group, root)  # 8
        if not self.is_root:
            self.module.zero_grad()          # only the root keeps gradients
            return None
        for p, g in zip(self.params, unflatten(total, self.shapes)):
            p.grad = g
        with trace.span("optimizer"):
            optimizer.step()                                             # 9
        return loss.item()
