"""Module 4: small helpers."""


def helper_4_0(x):
    return x + 0


def helper_4_1(x):
    return x + 1


def helper_4_2(x):
    return x + 2


def helper_4_3(x):
    return x + 3


def helper_4_4(x):
    return x + 4
