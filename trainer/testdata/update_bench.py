"""One DICE value step plus one weighted-BC policy step at batch 8192 on CPU.

The PyTorch twin of trainer/dice BenchmarkUpdate8192 (same networks, losses,
batch layout and Adam settings), timed for the side-by-side comparison.
Prints one JSON line: {"ms_per_update": mean, "min_ms": fastest update,
"torch": version, "threads": n}. On a shared machine the fastest update is
the steadier number.
Exits with status 3 if torch cannot be imported.
"""

import argparse
import math

from torchtiming import report, require_torch

torch = require_torch()
nn = torch.nn


def mlp(sizes):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=65536, help="transitions in the offline set")
    p.add_argument("--obs", type=int, default=48)
    p.add_argument("--act", type=int, default=12)
    p.add_argument("--batch", type=int, default=8192)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    n, d, a, b, gamma = args.n, args.obs, args.act, args.batch, 0.99

    obs, next_obs = torch.randn(n, d), torch.randn(n, d)
    act = (torch.rand(n, a) * 2 - 1).clamp(-(1 - 1e-6), 1 - 1e-6)
    u = torch.atanh(act)
    log_jac = torch.log1p(-act * act).sum(-1)
    reward = torch.randn(n)
    not_done = torch.ones(n)
    init_idx = torch.arange(0, n, 50)
    weights = torch.softmax(torch.randn(n, dtype=torch.float64), 0).float()

    value = mlp([d, 256, 256, 1])
    policy = mlp([d, 256, 256, 2 * a])
    v_opt = torch.optim.Adam(value.parameters(), lr=3e-4)
    p_opt = torch.optim.Adam(policy.parameters(), lr=3e-4)
    half_log_2pi = 0.5 * math.log(2 * math.pi)

    def update():
        i = torch.randint(n, (b,))
        j = init_idx[torch.randint(len(init_idx), (b,))]
        v = value(torch.cat([obs[i], next_obs[i], obs[j]])).squeeze(-1)
        delta = reward[i] + gamma * not_done[i] * v[b:2 * b] - v[:b]
        v_loss = (1 - gamma) * v[2 * b:].mean() + torch.logsumexp(delta, 0) - math.log(b)
        v_opt.zero_grad()
        v_loss.backward()
        v_opt.step()

        k = torch.multinomial(weights, b, replacement=True)  # drawn by weight, as the Go side
        out = policy(obs[k])
        mean = out[:, :a].clamp(-7.25, 7.25)
        log_std = out[:, a:].clamp(-5, 2)
        z = (u[k] - mean) * torch.exp(-log_std)
        log_p = (-0.5 * z * z - log_std - half_log_2pi).sum(-1) - log_jac[k]
        p_loss = -log_p.mean()
        p_opt.zero_grad()
        p_loss.backward()
        p_opt.step()

    report(torch, update, args.warmup, args.iters)


if __name__ == "__main__":
    main()
