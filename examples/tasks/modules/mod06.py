"""Module 6: small helpers."""


def helper_6_0(x):
    return x + 0


def helper_6_1(x):
    return x + 1


def helper_6_2(x):
    return x + 2


def helper_6_3(x):
    return x + 3


def helper_6_4(x):
    return x + 4


def helper_6_5(x):
    return x + 5


def helper_6_6(x):
    return x + 6


def helper_6_7(x):
    return x + 7


def helper_6_8(x):
    return x + 8


def helper_6_9(x):
    return x + 9


def helper_6_10(x):
    return x + 10


def helper_6_11(x):
    return x + 11


def helper_6_12(x):
    return x + 12


def helper_6_13(x):
    return x + 13


def helper_6_14(x):
    return x + 14
