"""Module 3: small helpers."""


def helper_3_0(x):
    return x + 0


def helper_3_1(x):
    return x + 1


def helper_3_2(x):
    return x + 2


def helper_3_3(x):
    return x + 3


def helper_3_4(x):
    return x + 4


def helper_3_5(x):
    return x + 5


def helper_3_6(x):
    return x + 6


def helper_3_7(x):
    return x + 7


def helper_3_8(x):
    return x + 8


def helper_3_9(x):
    return x + 9
