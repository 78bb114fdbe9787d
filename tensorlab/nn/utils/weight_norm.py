"""placeholder being written"""
def weight_norm(): pass
def remove_weight_norm(): pass
