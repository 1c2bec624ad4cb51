"""A pipeline stage: consecutive layers of a GPT, cut from the full model.

The idea (inter-layer model parallelism). K ranks each own a run of
consecutive transformer blocks. Stage 0 also owns the embedding (wte, wpe),
stage K-1 the final LayerNorm, the head and the loss. Only activations
(B/M, T, D) cross a stage boundary, forward; their gradients cross it back.

Balance by layer count: L blocks over K stages as ``numpy.array_split``
does, the first L mod K stages one block more (L = 8, K = 3: 3, 3, 2).

Built from the full model. ``PipelineStage(model, stage, num_stages)`` takes
any model that follows the GPT protocol (``embed(idx)``, ``blocks``,
``head_loss(x, targets)``; nn.GPT, and a tensor-parallel GPT with the same
names) and keeps references to the parts this stage owns only. Parameters
keep the full model's dotted names ("blocks.5.mlp.fc1.weight"), so a stage
is compared with the serial model name by name and the optimizer, DDP or
ZeRO see ordinary Modules. The caller builds the whole model and then drops
it: fine for these tiny models (a real system would build only its layers;
``nn.gpt_init`` is keyed by name so it could).

How the protocol is kept without the whole model: the modules registered
before ``blocks`` (wte, wpe, drop) belong to the embedding, those after it
(ln_f, head) to the head. The stage makes a *shell*, an instance of the
model's class holding the model's plain attributes (config, groups) and only
its own modules, so ``shell.embed`` and ``shell.head_loss`` are the model's
own methods, unchanged. No communication here: see engine.py.
"""
from minimegatron.comm import chunk_sizes
from minimegatron.nn.module import Module
from minimegatron.parallel.pipeline_parallel.recompute import recompute
from minimegatron.parallel.pipeline_parallel.schedules import loop_placement
from minimegatron.parallel.pipeline_parallel.dualpipe import mirror_placement
from minimegatron.parallel.pipeline_parallel.zero_bubble import v_placement

# chunk -> which stage's layers it holds, and of how many stages (K stages, v chunks)
PLACEMENTS = {"loop": loop_placement, "v": v_placement, "mirror": mirror_placement}


def stage_layers(num_layers, num_stages, stage):
    """The block indices stage ``stage`` owns: a balanced run of consecutive layers."""
    if num_stages > num_layers:
        raise ValueError(f"pipeline of {num_stages} stages, but the model has only "
                         f"{num_layers} layers: every stage needs at least one layer")
    if not 0 <= stage < num_stages:
        raise ValueError(f"stage {stage} is not in 0..{num_stages - 1}")
    sizes = chunk_sizes(num_layers, num_stages)
    first = sum(sizes[:stage])
    return list(range(first, first + sizes[stage]))


class StageBlocks(Module):
    """Some of a model's blocks, registered under their original indices ("5", "6")."""

    def __init__(self, blocks, indices):
        super().__init__()
        object.__setattr__(self, "indices", list(indices))
        for i in indices:
            setattr(self, str(i), blocks[i])

    def __iter__(self):
        return (getattr(self, str(i)) for i in self.indices)

    def __len__(self):
        return len(self.indices)


def _shell(model, keep):
    """An empty instance of the model's class with its plain attributes and ``keep`` modules."""
    shell = object.__new__(type(model))
    Module.__init__(shell)
    for name, value in vars(model).items():
        if name.startswith("_") or name == "training" or name in model._modules:
            continue
        object.__setattr__(shell, name, value)
    for name, module in keep.items():
        setattr(shell, name, module)
    return shell


class PipelineStage(Module):
    """Stage ``stage`` of ``num_stages``: ``forward(x) -> x`` through its blocks, ``loss``.

    The first stage's forward takes token ids (B, T) and embeds them; the
    others take the activation (B, T, D) received from the previous stage.
    The last stage's ``loss(x, targets)`` is the model's head_loss.
    """

    def __init__(self, model, stage, num_stages):
        super().__init__()
        layers = stage_layers(len(model.blocks), num_stages, stage)
        names = list(model._modules)
        if "blocks" not in names or model._parameters:
            raise ValueError("PipelineStage needs a GPT-like model: modules before and after "
                             "a `blocks` list and no parameters of its own")
        cut = names.index("blocks")
        owned = {}
        if stage == 0:
            owned.update((n, model._modules[n]) for n in names[:cut])
        owned["blocks"] = StageBlocks(model.blocks, layers)
        if stage == num_stages - 1:
            owned.update((n, model._modules[n]) for n in names[cut + 1:])
        for name, module in owned.items():
            setattr(self, name, module)     # same dotted names as the full model
        object.__setattr__(self, "shell", _shell(model, owned))
        self.stage, self.num_stages, self.layers = stage, num_stages, layers
        self.config = getattr(model, "config", None)
        self.checkpoint_activations = False
        self.input_origin = (None if stage == 0 else      # how a NaN report names the input
                             f"pipeline stage {stage}, received from stage {stage - 1}")

    @property
    def is_first(self):
        return self.stage == 0

    @property
    def is_last(self):
        return self.stage == self.num_stages - 1

    def forward(self, x):
        """(B, T) ids on the first stage, else (B, T, D) -> (B, T, D)."""
        if self.is_first:
            x = self.shell.embed(x)                               # (B, T, D)
        for block in self.blocks:
            x = recompute(block, x) if self.checkpoint_activations else block(x)
        return x

    def boundary_shape(self, batch, steps):
        """The activation a stage sends on: the model's ``boundary_shape`` or (B, T, D)."""
        shape = getattr(self.shell, "boundary_shape", None)
        return shape(batch, steps) if shape else (batch, steps, self.config.d_model)

    def loss(self, x, targets):
        """Mean cross entropy of the last hidden state (B, T, D) (last stage only)."""
        if not self.is_last:
            raise RuntimeError(f"stage {self.stage} has no head: only the last stage has")
        return self.shell.head_loss(x, targets)

    def __repr__(self):
        return (f"PipelineStage({self.stage}/{self.num_stages}, blocks {self.layers}, "
                f"{self.num_parameters():,} parameters)")


class ChunkedStage(Module):
    """Rank ``stage``'s v model chunks for the interleaved schedule (schedules.interleaved).

    The L blocks are cut into K*v groups; chunk c of rank k is the PipelineStage
    of virtual stage c*K + k of K*v (K = 2, v = 2, 8 layers: rank 0 holds blocks
    0-1 and 4-5, rank 1 blocks 2-3 and 6-7). ``chunks[c]`` runs chunk c; the
    ChunkedStage itself registers the union of their modules under the full
    model's names, so optimizers, DDP and ZeRO see one Module as before.

    ``placement="v"`` (zbv, two chunks): chunk 0 is virtual stage k, chunk 1 is
    2K-1-k, so the model goes down the ranks and back up (K = 2, 4 layers: rank 0
    holds blocks 0 and 3, rank 1 blocks 1 and 2; rank 0 has the embedding and the head).

    ``placement="mirror"`` (dualpipe, two chunks): chunk 0 is stage k of K, chunk 1
    stage K-1-k, each a whole stage, so ranks k and K-1-k hold the same layers (K = 4,
    8 layers: ranks 0 and 3 hold blocks 0-1 and 6-7, ranks 1 and 2 blocks 2-3 and 4-5).
    """

    def __init__(self, model, stage, num_stages, num_chunks, placement="loop"):
        super().__init__()
        if placement not in PLACEMENTS or placement != "loop" and num_chunks != 2:
            raise ValueError(f"placement must be 'loop' (any chunks), 'v' (2 chunks) or "
                             f"'mirror' (2 chunks); got placement={placement!r}, "
                             f"num_chunks={num_chunks}")
        virtual, place = num_stages * num_chunks, PLACEMENTS[placement]
        if placement == "mirror":                  # whole stages of K, each held twice
            virtual = num_stages
        chunks = [PipelineStage(model, place(num_stages, stage, c), virtual)
                  for c in range(num_chunks)]
        layers = [i for chunk in chunks for i in chunk.layers]
        if placement == "mirror":                  # ranks k and K-1-k: the same module
            layers = sorted(layers)
        owned = {name: module for chunk in chunks for name, module in chunk._modules.items()}
        owned["blocks"] = StageBlocks(model.blocks, layers)
        for name in model._modules:                # the full model's order: embed, blocks, head
            if name in owned:
                setattr(self, name, owned[name])
        object.__setattr__(self, "chunks", chunks)
        self.stage, self.num_stages, self.layers = stage, num_stages, layers
        self.placement = placement
        self.config = getattr(model, "config", None)

    @property
    def checkpoint_activations(self):
        return self.chunks[0].checkpoint_activations

    @checkpoint_activations.setter
    def checkpoint_activations(self, value):
        for chunk in self.chunks:
            chunk.checkpoint_activations = value

    def __repr__(self):
        return (f"ChunkedStage({self.stage}/{self.num_stages}, {len(self.chunks)} chunks, "
                f"blocks {self.layers}, {self.num_parameters():,} parameters)")
