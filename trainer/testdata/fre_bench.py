"""One FRE pre-training step (encoder + decoder forward, backward, Adam) on CPU.

The PyTorch twin of trainer/fre BenchmarkStep512: the same architecture
(tokens [Dense(s); Embed(bin(r))], pre-LN transformer blocks with multi-head
self-attention and a GELU (tanh) feed-forward layer, final LayerNorm, mean-pool,
mean and log-std heads; decoder [z; s] -> hidden layers of Dense, mish,
LayerNorm -> 1), the same loss (MSE + kl_weight * KL with h = log-std) and
Adam, at the same batch. Prints one JSON line: {"ms_per_update": mean,
"min_ms": fastest step, "torch": version, "threads": n}.
Exits with status 3 if torch cannot be imported.
"""

import argparse

from torchtiming import report, require_torch

torch = require_torch()
nn = torch.nn


class Block(nn.Module):
    def __init__(self, width, heads, ffn):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(width)
        self.ffn = nn.Sequential(nn.Linear(width, ffn), nn.GELU(approximate="tanh"), nn.Linear(ffn, width))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ffn(self.ln2(x))


class FRE(nn.Module):
    def __init__(self, d, state_width, reward_width, bins, blocks, heads, ffn, latent, hidden):
        super().__init__()
        width = state_width + reward_width
        self.state = nn.Linear(d, state_width)
        self.embed = nn.Embedding(bins, reward_width)
        self.blocks = nn.Sequential(*[Block(width, heads, ffn) for _ in range(blocks)])
        self.final = nn.LayerNorm(width)
        self.mean = nn.Linear(width, latent)
        self.log_std = nn.Linear(width, latent)
        layers, n = [], latent + d
        for h in hidden:
            layers += [nn.Linear(n, h), nn.Mish(), nn.LayerNorm(h)]
            n = h
        layers.append(nn.Linear(n, 1))
        self.decoder = nn.Sequential(*layers)

    def forward(self, enc_states, enc_bins, dec_states):
        x = torch.cat([self.state(enc_states), self.embed(enc_bins)], -1)
        pooled = self.final(self.blocks(x)).mean(1)
        mean, log_std = self.mean(pooled), self.log_std(pooled)
        z = mean + torch.randn_like(mean) * torch.exp(log_std)
        m = dec_states.shape[1]
        zs = z.unsqueeze(1).expand(-1, m, -1)
        pred = self.decoder(torch.cat([zs, dec_states], -1)).squeeze(-1)
        return pred, mean, log_std


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--state", type=int, default=48)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--tokens", type=int, default=32)
    p.add_argument("--decode", type=int, default=8)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--blocks", type=int, default=2)
    p.add_argument("--ffn", type=int, default=256)
    p.add_argument("--latent", type=int, default=128)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--bins", type=int, default=32)
    p.add_argument("--kl", type=float, default=0.01)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    b, t, m, d = args.batch, args.tokens, args.decode, args.state
    model = FRE(d, args.width // 2, args.width // 2, args.bins, args.blocks, args.heads, args.ffn,
                args.latent, [args.hidden] * 3)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    enc_states = torch.randn(b, t, d)
    enc_bins = torch.randint(args.bins, (b, t))
    dec_states = torch.randn(b, m, d)
    dec_rewards = torch.rand(b, m) * 2 - 1

    def update():
        pred, mean, log_std = model(enc_states, enc_bins, dec_states)
        mse = ((pred - dec_rewards) ** 2).mean()
        kl = 0.5 * (mean ** 2 + torch.exp(2 * log_std) - 2 * log_std - 1).sum(-1).mean()
        loss = mse + args.kl * kl
        opt.zero_grad()
        loss.backward()
        opt.step()

    report(torch, update, args.warmup, args.iters)


if __name__ == "__main__":
    main()
