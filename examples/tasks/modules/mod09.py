"""Module 9: small helpers."""


def helper_9_0(x):
    return x + 0


def helper_9_1(x):
    return x + 1


def helper_9_2(x):
    return x + 2


def helper_9_3(x):
    return x + 3


def helper_9_4(x):
    return x + 4


def helper_9_5(x):
    return x + 5
