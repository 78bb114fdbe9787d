def save(*a): pass
def load(*a): pass
