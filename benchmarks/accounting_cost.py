"""What accounting costs, in CPU-seconds (issue 51: the exact accountant must stay cheap enough to be the
default). Run from a checkout's root; the same script measures an older checkout (``PYTHONPATH=.``) for
the before column:

    python benchmarks/accounting_cost.py [--json]

Cases, each in a fresh process (no memo carried over), the RDP curve cache off:

- ``demo``: DP-FedAvg on the demo, participation 0.05, ε = 2: the mechanism's noise calibration, then
  the run's whole accounting replayed without training (:func:`fedcore.engine.replay.replay_headlines`);
- ``attack_digits``: "Spend exactly ε" on the six budgets of ``attack_digits`` (each solved on its own);
- ``ledger_5000``: 5,000 clients at 50 distinct budgets (noise multipliers), 20 rounds of
  Poisson(0.1)-sampled local Gaussian uploads: the ledger's records and the headline every round;
- ``calibrate_500``: the noise of 500 distinct budgets (DP-SGD, q = 0.02, 500 steps): a calibration's
  cost per distinct budget (every budget is solved on its own).

CPU-s is this process's (``time.process_time``) plus the curve workers' where the checkout counts them.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

CASES = ("demo", "attack_digits", "ledger_5000", "calibrate_500")


def _background() -> float:
    try:
        from fedcore.accounting.curve_workers import background_cpu_seconds
    except ImportError:
        try:
            from fedcore.accounting.ledger import background_cpu_seconds
        except ImportError:
            return 0.0
    return background_cpu_seconds()


def case(name: str) -> dict:
    import numpy as np

    from fedcore.layering import build_config

    t0, b0, w0 = time.process_time(), _background(), time.perf_counter()
    out: dict = {}
    if name == "demo":
        from fedcore.engine.replay import replay_headlines
        from fedcore.engine.setup import prepare

        cfg = build_config("demo", None, ["method=dp_fedavg", "participation=0.05", "rounds=20",
                                          "privacy.epsilon=2", "privacy.delta=1e-6"])
        s = prepare(cfg.replace(device="cpu"))
        out["calibrate_cpu_s"] = time.process_time() - t0
        out["headline"] = float(replay_headlines(cfg, s).max())
        out["noise_multiplier"] = float(np.max(s.mechanism.accountant_z))
    elif name == "attack_digits":
        from fedcore.equal_privacy import match_headline

        cfg = build_config("attack_digits", None, [])
        matched = match_headline(cfg, max(cfg.privacy.epsilons(cfg.num_clients)))
        out["spent_over_set"] = [round(c["spent"] / c["set"], 4) for c in matched.per_client]
    elif name == "ledger_5000":
        import torch

        from fedcore.accounting import GaussianRecord, Ledger

        n, rng = 5000, np.random.default_rng(0)
        z = rng.choice(np.geomspace(0.8, 3.0, 50), n)
        ledger = Ledger(n, np.full(n, 1e-5), "local")
        for _ in range(20):
            ids = np.flatnonzero(rng.random(n) < 0.1)
            ledger.record(torch.as_tensor(ids), None, GaussianRecord(noise_multiplier=z[ids]))
            out["headline"] = float(ledger.headline().max())
    elif name == "calibrate_500":
        from fedcore.accounting.calibrate import calibrate_noise_multiplier

        eps = np.geomspace(0.5, 50.0, 500)
        z = calibrate_noise_multiplier(eps, 1e-5, 0.02, 500)
        out["z_range"] = [float(z.min()), float(z.max())]
    out["cpu_s"] = round(time.process_time() - t0 + _background() - b0, 3)
    out["wall_s"] = round(time.perf_counter() - w0, 3)
    return out


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--case":
        print(json.dumps(case(sys.argv[2])))
        return
    env = {**os.environ, "FEDCORE_RDP_CACHE": "off", "PYTHONPATH": os.getcwd()}
    results = {}
    for name in CASES:
        done = subprocess.run([sys.executable, __file__, "--case", name], capture_output=True, text=True, env=env,
                              timeout=3600)
        lines = done.stdout.strip().splitlines()
        results[name] = json.loads(lines[-1]) if done.returncode == 0 and lines else {"error": done.stderr[-400:]}
    results["load_1min"] = os.getloadavg()[0]
    print(json.dumps(results, indent=1) if "--json" in sys.argv else results)


if __name__ == "__main__":
    main()
