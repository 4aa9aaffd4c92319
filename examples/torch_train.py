"""Training with torch.optim.Adam around an sgc loss (sgc.torch, spec
section 10): the two-layer perceptron of examples/mlp.sg fits a smooth
function of four inputs. The parameters are torch Parameters; the loss and
its gradient come from the compiled mlp_loss and mlp_loss_grad (x and y
are const: no gradient for them); PyTorch's optimizer does the rest.

    PYTHONPATH=build/python /usr/bin/python3 examples/torch_train.py

Prints the loss as it falls, and checks the first one against the same
model written in PyTorch.
"""
import os
import sys

import torch

import sgc
import sgc.torch

torch.manual_seed(0)
here = os.path.dirname(os.path.abspath(__file__))
m = sgc.load(os.path.join(here, "mlp.sg"))
mlp_loss = sgc.torch.function(m, "mlp_loss")

n, d, h, o = 256, 4, 16, 1
x = torch.randn(n, d)
y = torch.sin(x @ torch.tensor([[1.0], [-2.0], [0.5], [1.5]])) + 0.1 * x[:, :1] ** 2
params = [torch.nn.Parameter(0.5 * torch.randn(d, h)), torch.nn.Parameter(torch.zeros(h)),
          torch.nn.Parameter(0.5 * torch.randn(h, o)), torch.nn.Parameter(torch.zeros(o))]
w1, b1, w2, b2 = params
optimizer = torch.optim.Adam(params, lr=0.02)

first = None
for step in range(401):
    optimizer.zero_grad()
    loss = mlp_loss(w1, b1, w2, b2, x, y)
    if step == 0:
        first = loss.item()
        with torch.no_grad():
            ref = torch.mean(torch.square(torch.tanh(x @ w1 + b1) @ w2 + b2 - y)).item()
        print("step 0: loss %.4f (the same model in PyTorch: %.4f)" % (first, ref))
    loss.backward()
    optimizer.step()
    if step and step % 100 == 0:
        print("step %d: loss %.4f" % (step, loss.item()))
print("the loss fell %.0fx" % (first / loss.item()))
sys.exit(0 if loss.item() < first / 10 else 1)
