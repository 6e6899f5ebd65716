"""The Decision Transformer's network, written once for paddle and torch: a causal transformer
over interleaved (return-to-go, state, action) tokens that predicts each step's action."""

from __future__ import annotations

from parl.core.neutral import Model
from parl.core.ops import Tensor
from parl.core.validation import positive_int

__all__ = ["DecisionTransformerModel"]


class DecisionTransformerModel(Model):
    """A GPT-style causal transformer over ``(R_1, s_1, a_1, R_2, s_2, a_2, ...)``.

    Each return-to-go, state and action gets its own linear embedding, plus a learned
    embedding of its episode timestep (in place of a position embedding, as in Chen et al.);
    the tokens are layer-normalised, pass ``num_layers`` blocks of the framework's own
    ``TransformerEncoderLayer`` (pre-norm, ReLU, a feed-forward width of ``4·embed_dim``)
    under a causal mask, and a final layer norm. The action of step ``t`` is predicted from
    the output at the state token ``s_t`` (so it has seen ``R_≤t``, ``s_≤t`` and ``a_<t``),
    squashed by ``tanh`` into ``[-1, 1]``.

    Args:
        obs_dim: length of a state.
        act_dim: length of an action.
        embed_dim: width of the tokens (the paper: 128).
        num_layers: transformer blocks (3).
        num_heads: attention heads per block (1); must divide ``embed_dim``.
        max_episode_steps: timesteps the timestep embedding holds (later ones share the last).
        dropout: dropout of the embeddings, attention weights and residual branches (0.1).
        backend: ``"paddle"`` or ``"torch"``; None: :func:`parl.get_backend`.

    Examples:
        >>> import numpy as np
        >>> model = DecisionTransformerModel(3, 1, embed_dim=16, num_layers=1)
        >>> ops = model.ops
        >>> states, actions = ops.to_tensor(np.zeros((2, 5, 3))), ops.to_tensor(np.zeros((2, 5, 1)))
        >>> returns = ops.to_tensor(np.zeros((2, 5, 1)))
        >>> timesteps = ops.to_tensor(np.tile(np.arange(5), (2, 1)), "int64")
        >>> list(model(states, actions, returns, timesteps).shape)
        [2, 5, 1]
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        embed_dim: int = 128,
        num_layers: int = 3,
        num_heads: int = 1,
        max_episode_steps: int = 1000,
        dropout: float = 0.1,
        *,
        backend: str | None = None,
    ) -> None:
        super().__init__()
        self.obs_dim = positive_int("obs_dim", obs_dim)
        self.act_dim = positive_int("act_dim", act_dim)
        self.embed_dim = positive_int("embed_dim", embed_dim)
        self.max_episode_steps = positive_int("max_episode_steps", max_episode_steps)
        if embed_dim % positive_int("num_heads", num_heads):
            raise ValueError(
                f"num_heads ({num_heads}) must divide embed_dim ({embed_dim}); pick e.g. "
                f"num_heads=1 or an embed_dim that is a multiple of {num_heads}"
            )
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {dropout!r}")
        nn, ops = self.nn, self.ops
        self.embed_timestep = nn.Embedding(max_episode_steps, embed_dim)
        self.embed_return = nn.Linear(1, embed_dim)
        self.embed_state = nn.Linear(obs_dim, embed_dim)
        self.embed_action = nn.Linear(act_dim, embed_dim)
        self.embed_norm = nn.LayerNorm(embed_dim)
        self.embed_dropout = nn.Dropout(dropout)
        self.blocks = ops.layer_list(
            ops.transformer_encoder_layer(embed_dim, num_heads, 4 * embed_dim, dropout)
            for _ in range(positive_int("num_layers", num_layers))
        )
        self.final_norm = nn.LayerNorm(embed_dim)
        self.predict_action = nn.Linear(embed_dim, act_dim)

    def forward(
        self, states: Tensor, actions: Tensor, returns_to_go: Tensor, timesteps: Tensor
    ) -> Tensor:
        """Predicted actions ``[B, K, act_dim]`` in ``[-1, 1]``.

        Args:
            states: ``[B, K, obs_dim]`` (normalised as the algorithm trains them).
            actions: ``[B, K, act_dim]``; the action of the last step may be anything (its
                token comes after the state that predicts it).
            returns_to_go: ``[B, K, 1]``, scaled as the algorithm trains them.
            timesteps: ``[B, K]`` int64 episode steps, below ``max_episode_steps``.
        """
        batch, length = states.shape[0], states.shape[1]
        time = self.embed_timestep(timesteps)
        tokens = self.ops.stack(
            [
                self.embed_return(returns_to_go) + time,
                self.embed_state(states) + time,
                self.embed_action(actions) + time,
            ],
            axis=2,
        ).reshape([batch, 3 * length, self.embed_dim])
        x = self.embed_dropout(self.embed_norm(tokens))
        mask = self.ops.causal_mask(3 * length, x)
        for block in self.blocks:
            x = block(x, mask)
        x = self.final_norm(x).reshape([batch, length, 3, self.embed_dim])
        return self.predict_action(x[:, :, 1]).tanh()
