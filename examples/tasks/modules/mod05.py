"""Module 5: small helpers."""


def helper_5_0(x):
    return x + 0


def helper_5_1(x):
    return x + 1


def helper_5_2(x):
    return x + 2
