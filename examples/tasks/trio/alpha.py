"""Alpha: a few functions."""


def alpha_0(value):
    return value * 2


def alpha_1(value):
    return value * 3
